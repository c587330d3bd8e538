"""Neutral foundations shared by training, evals and analysis; imports none of them."""
