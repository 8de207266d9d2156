"""Maglev: a sliding-window decoder with recurrent K/V memory injection."""
