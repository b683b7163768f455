"""A stand-in for verl on CPU: the package the validate tests migrate and train with."""
