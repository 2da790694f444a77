"""The VCA 2 cards in the daemon: the node state machine, its health ladder, and telemetry.

Above `boot/` (the bring-up and take-down steps) and `smemd.devices` (vcactl, ssh), which it
drives; below `smemd.fleet`, whose vca2 kind owns a `Cards`. It never imports the fleet.
"""
