"""`python -m plugins.fake_dra_driver --config PROFILE.yaml`."""

from plugins.fake_dra_driver.main import main

raise SystemExit(main())
