"""An example schedlab plug-in: one policy, one generator and one loader (see README.md)."""
