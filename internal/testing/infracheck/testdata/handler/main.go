// A handler's wiring as internal/testing/infracheck reads it (never compiled).
package main

const heavyName = "ingest-process"

func wire(mux *invoke.Mux) {
	mux.Handle(heavyName, invoke.ServiceBusTrigger, processMessage)
	mux.HandleTrigger(names.NightlySummaries, invoke.TimerTrigger, "timer", summarise)
	mux.Forward("/api/", api.New())
	other.Handle("GET /x", h) // not the protocol layer's mux
}
