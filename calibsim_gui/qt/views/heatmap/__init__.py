"""The Heatmap tab: a document set's matrix, or its neighbours when the set is too large."""
