"""The Text map tab: its controls, its worker's stages, colours, drawn items, marks and
nearest-texts panel."""
