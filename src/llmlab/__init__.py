"""LLM Lab: Transformers and LLMs built from scratch in PyTorch.

The package is organised by concept (attention, norms, feed-forward nets,
positions, blocks, models, experiments); the course pages in ``docs/`` import
from it and only format what it returns. Library code never prints.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
