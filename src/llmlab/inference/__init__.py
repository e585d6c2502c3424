"""Faster inference: smaller weights and fewer passes of the large model.

* :mod:`~llmlab.inference.quantize`: ``quantize_tensor``, ``dequantize``,
  ``QuantizedLinear``, ``quantize_weights`` -> ``QuantizationReport`` (symmetric
  absmax, 8 or 4 bits, per row or per group of columns).
* :mod:`~llmlab.inference.speculative`: ``speculative_generate`` ->
  ``SpeculativeStats`` (a draft model proposes, the target verifies in one pass).

Taught on: "Faster inference".
"""

from llmlab.inference.quantize import (
    QuantizationReport,
    QuantizedLinear,
    dequantize,
    quantize_tensor,
    quantize_weights,
)
from llmlab.inference.speculative import SpeculativeStats, speculative_generate

__all__ = [
    "QuantizationReport",
    "QuantizedLinear",
    "SpeculativeStats",
    "dequantize",
    "quantize_tensor",
    "quantize_weights",
    "speculative_generate",
]
