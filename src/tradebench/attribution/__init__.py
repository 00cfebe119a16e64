"""Return attribution of a run's episodes: the factor model built from the data, per window,
and the decomposition of every episode (the maths lives in `metrics.attribution` and
`metrics.factor_model`). `attribute_run(run_dir)` is what `tradebench attribute` calls."""
