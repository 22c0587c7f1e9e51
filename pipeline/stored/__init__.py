"""The warehouse read back as traces (rescore, judge, calibrate, show)."""
