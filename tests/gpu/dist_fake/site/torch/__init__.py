"""A stand-in for torch in tests/gpu/dist_fake.sh: only what check_dist.sh
asks of torch before it runs the job (see torch/distributed/run.py)."""
__version__ = "0+dist_fake"
