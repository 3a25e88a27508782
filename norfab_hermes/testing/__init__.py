"""Test support shipped with the package: the scripted model, its scenarios and an embedded NorFab lab."""
