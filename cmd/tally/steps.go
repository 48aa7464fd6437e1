package main

// The steps a job may name (schedule.jobs[].run) register themselves when
// their package is in the build; these are the ones no command calls by
// name. So does what every run that writes does first: allocation's (the
// open months' chargeback from the config).
import (
	_ "github.com/tally-dev/tally/allocation"
	_ "github.com/tally-dev/tally/deliver"
)
