"""Guest-pass domain of the whole-dialog methodology (seed 001): update / confirm / create."""
