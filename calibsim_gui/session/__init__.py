"""The session model: a session's state and rules as plain Python, the same for every face.

`SessionModel` (`model.py`) holds the inputs, model, references and where they came from,
results, human calibration, geometry fix, labels, filters and selection, with an `Event`
(`events.py`) for each change, and the rules between them; `references.py` says which references
fit a model and makes them; `selection.py` numbers a document set's pairs. The app
(`qt.state.AppState`, `qt.session.Session`), the command line (`cli.common`) and the Python API
(`api.Session`) drive it. It imports the core only: never Qt, the window, the command line or the API.
"""
