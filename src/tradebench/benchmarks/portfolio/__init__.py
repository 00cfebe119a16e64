"""Memory-controlled portfolio benchmark: CSI300 universe, A-share rules, masks and modes."""
