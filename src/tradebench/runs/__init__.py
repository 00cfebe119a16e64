"""Run specs, episode execution, the results store and resume."""
