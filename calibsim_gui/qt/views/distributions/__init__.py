"""The Distributions tab: raw and calibrated histograms against the references."""
