"""Data preparation: steps, manifest, reachability, summary."""
