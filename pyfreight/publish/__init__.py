"""Publishing what verify passed: release folders people and installers download from."""
