"""Lab `modules` (file `modules_inplace.py`): references and in-place updates at the level of a
model: loading a state dict, tying weights, an EMA model, BatchNorm's running statistics."""

FILENAME = "modules_inplace.py"
