"""Clock service: live Fischer clocks, presence, flags and Triple Block clocks (SPEC TB-, T-16..T-19, AR-5)."""
