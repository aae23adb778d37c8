"""The bottom layer: helpers every other layer may use, importing nothing of acceptgate's."""
