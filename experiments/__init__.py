"""Entry points (absl flags), configs and plots."""
