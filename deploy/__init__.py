"""Deployment material: the container build, Kubernetes manifests and Prometheus rules (the
rolling-bounce bench moved to tests/bench/rolling_bounce.py)."""
