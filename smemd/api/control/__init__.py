"""The daemon's own routes, for whoever runs it: health, status, metrics and tokens (`status`),
the requests it answered (`recent`), the card nodes (`nodes`), the fleet's lanes and lending
(`lanes`), and the judge's log, labels, calibration and dreaming (`calibration`). They may import
`smemd.api`'s shared modules and the engine, never `memory` or `legacy`."""
