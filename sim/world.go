package sim

import "github.com/floe-broker/floe/sim/world"

// The world the simulator runs clusters on is package sim/world, which
// node's and consensus's tests use too; these names keep sim's own code
// and its callers as they were.
type (
	// World is world.World.
	World = world.World
	// Config is world.Config.
	Config = world.Config
	// Env is world.Env.
	Env = world.Env
	// Instance is world.Instance.
	Instance = world.Instance
	// Factory is world.Factory.
	Factory = world.Factory
	// FatalEvent is world.FatalEvent.
	FatalEvent = world.FatalEvent
)

// NewWorld is world.New.
func NewWorld(cfg Config, f Factory) *World { return world.New(cfg, f) }
