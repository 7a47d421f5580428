"""Files the platform integrations install: scripts and workflow templates."""
