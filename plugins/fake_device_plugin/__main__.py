"""`python -m plugins.fake_device_plugin --config PROFILE.yaml`."""

from plugins.fake_device_plugin.main import main

raise SystemExit(main())
