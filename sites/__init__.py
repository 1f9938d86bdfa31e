"""Site files shipped with emews (installed as ``emews.sites``): one TOML file per machine."""
