from calibsim_gui.cli import main

raise SystemExit(main())
