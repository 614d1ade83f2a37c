"""The session as Qt objects: its live work (`session`), its shared state with a signal per
change (`state`), projects (`projects`; their autosave, which watches the window's tabs, is the
shell's), the settings (`preferences`), the human scores compared with (`human_scores`), how a
document set is scored (`document_sets`), the questions asked while reading an input
(`input_dialogs`) and the Export dialog and report writing that File ▸ Export and the Search tab
share (`exports`).

May import `widgets` only; never views, editors, flows or the shell.
"""
