"""Knowledge-horizon probe: which months of market facts a model remembers.

Questions are generated per calendar month from a dataset (`questions`), checked against
the raw files by separate code (`check`), asked bright and blinded (`render`) through the
harness (`benchmark`), and read as a curve with controls and a measured horizon (`curve`,
`results`); `uses` hands the horizon to the certificate, the leaderboard and window choice.
"""
