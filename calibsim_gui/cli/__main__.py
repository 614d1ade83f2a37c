"""`python -m calibsim_gui.cli`: the same as `calibsim`."""

from calibsim_gui.cli import main

raise SystemExit(main())
