"""
NorFab worker plugins of the lab (loaded from the lab inventory's ``plugins:``;
NorFab puts the inventory's folder on ``sys.path``, so this package is found
without being installed).
"""
