"""The Text map tab: its worker's stages, colours, drawn items, marks and nearest-texts panel."""
