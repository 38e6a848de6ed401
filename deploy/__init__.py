"""Deployment material: the container build, Kubernetes manifests and the rolling-bounce
harness (`python deploy/rolling_bounce.py`)."""
