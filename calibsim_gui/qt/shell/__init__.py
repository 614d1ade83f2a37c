"""The window's shell: the entry point (`app`), the main window's wiring of its parts
(`main_window`), menus (`actions`), tabs and panes (`tab_views`, `panels`), the status bar
(`task_status`), the title (`window_title`), the autosave of the project (`autosave`) and the
screenshot tour.

May import every other `qt` package; nothing imports the shell but the command line's entry.
"""
