"""Learned timing models: the network, checkpoints, the scorer built from them, training."""
