"""Measurements built on the real-time loop: simulated users, a planted preference, a
permuted-feedback control, a fixed panel, power and trend tests. The loop never imports
this package; it calls what `measure.build` returns through `realtime.context.Measurement`."""
