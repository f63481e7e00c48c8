package db

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// GatewayChannel is the PostgreSQL notification channel on which every
// change that can alter a [Store.CallTool] result is announced, in the
// changing transaction, with the organization's id as payload (migration
// 00014's triggers): a source or its tools written or deleted, a
// credential of any scope written or deleted, a policy written (it bumps
// the organization's or workspace's policy_version), a workspace or an
// organization deleted.
const GatewayChannel = "toolgate_gateway"

// ListenGatewayChanges holds a connection of its own that LISTENs on
// [GatewayChannel], calls ready once it listens, then changed with each
// announced organization id (0 for a payload that is not one: drop
// everything), until ctx ends or the connection fails; it returns why.
// Announcements made while nobody listened are lost: a caller starting
// again must forget what it knew.
func (s *Store) ListenGatewayChanges(ctx context.Context, ready func(), changed func(orgID int64)) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect to listen for gateway changes: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+GatewayChannel); err != nil {
		return fmt.Errorf("listen for gateway changes: %w", err)
	}
	ready()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for gateway changes: %w", err)
		}
		id, err := strconv.ParseInt(n.Payload, 10, 64)
		if err != nil {
			id = 0
		}
		changed(id)
	}
}

// OnGatewayChange registers f to run with the organization's id each time
// this Store commits a change a tool lookup reads (a source, its tools, a
// credential, a policy), before the writing method returns; remove
// unregisters it. So a replica reads its own writes at once; changes by
// other processes arrive through [Store.ListenGatewayChanges].
func (s *Store) OnGatewayChange(f func(orgID int64)) (remove func()) {
	return s.gatewayHooks.add(f)
}

// gatewayChanged runs the gateway hooks for orgID when err is nil, and
// returns err.
func (s *Store) gatewayChanged(orgID int64, err error) error {
	if err == nil {
		s.gatewayHooks.run(orgID)
	}
	return err
}
