// Package controller is the cluster metadata state machine replicated by the
// controller Raft group: brokers, topics, partition placement, topic
// configs, reported partition leaders, producer-id blocks, and the ACLs and
// roles the authorizer enforces (security.go). Every broker
// applies the same commands in the same order and reaches the same State.
//
// Decisions that need a choice (where to place replicas) are made by the
// proposer before proposing (placement.go); Apply only validates and
// records, so it is a pure function of the log.
//
// Core code: deterministic, no I/O, no goroutines, sorted iteration only.
package controller
