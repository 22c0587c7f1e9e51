"""Guest-pass domain of the whole-dialog methodology (the whole-dialog method): update / confirm /
create."""
