"""The Results tab: its filters, frozen text columns and the summary line above the table (the
table model itself, shared with the Compare tab, is `widgets.results_model`)."""
