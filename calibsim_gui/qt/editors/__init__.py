"""The tabs that change what the session scores with: the anchor ladder (`anchor_editor`,
`anchor_models`, `calibrated_map_plot`), the background and its profile (`background_loader`,
`background_files`) and the model (`model_manager`).

May import `session` and `widgets`; never `views`, `flows` or the shell.
"""
