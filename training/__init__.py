"""Training: the pipeline-parallel engine, the trainer and the retraining CLI."""
