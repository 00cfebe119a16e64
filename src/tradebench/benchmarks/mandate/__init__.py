"""The mandate benchmark (OpenPM): analysts, captures, constructors, the critic, the broker."""
