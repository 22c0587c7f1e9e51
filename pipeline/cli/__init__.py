"""The agentsweep command line: the only room that may import flows/ and reports/."""
