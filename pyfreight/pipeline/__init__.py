"""The flow above its steps: a build checked and packed (distribute), and a full archive
rebuilt from scratch and compared (reproduce). Each step below is called in order, none
is handed another as a callback."""
