package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Kind is what an event is about.
type Kind int

const (
	// Authentication: a client proved (or failed to prove) who it is.
	Authentication Kind = iota + 1
	// Authorization: the authorizer allowed or denied an operation.
	Authorization
	// Change: a request that changes cluster state (topics, configs,
	// partitions, reassignments, ACLs, roles, users, groups, records).
	Change
)

// Event is one audited happening as the broker saw it.
type Event struct {
	Kind   Kind
	TimeMs int64 // wall time, ms since the epoch
	Node   int32 // the broker that saw it
	UID    string
	// Principal is who acted ("User:alice"); Client their address
	// ("ip:port"); ClientID the Kafka client.id; Listener the listener
	// they came in on.
	Principal string
	Client    string
	ClientID  string
	Listener  string
	// API is the Kafka API ("CreateTopics"), or for authentication the
	// SASL/TLS step ("SaslAuthenticate").
	API string
	// Action is what was attempted: an ACL operation ("WRITE") for an
	// authorization; "create", "delete", "alter"... for a change;
	// "authenticate" for an authentication.
	Action string
	// Resource is what it was attempted on (Type "topic", "group",
	// "cluster", "transactional_id", "acl", "role", "user", "broker"...).
	Resource Resource
	Success  bool
	// Reason says why: the ACL or rule that decided, the error.
	Reason string
	// Mechanism is the authentication mechanism ("SCRAM-SHA-256").
	Mechanism string
}

// Resource is one OCSF resource.
type Resource struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// Record is the JSON document of one event (OCSF-shaped). Its fields are
// structs only, so encoding/json writes them in one order: a record's
// bytes are a function of the event and its prev hash.
type Record struct {
	Time         int64       `json:"time"`
	ClassUID     int         `json:"class_uid"`
	ClassName    string      `json:"class_name"`
	CategoryUID  int         `json:"category_uid"`
	CategoryName string      `json:"category_name"`
	ActivityID   int         `json:"activity_id"`
	ActivityName string      `json:"activity_name"`
	TypeUID      int         `json:"type_uid"`
	SeverityID   int         `json:"severity_id"`
	StatusID     int         `json:"status_id"`
	Status       string      `json:"status"`
	StatusDetail string      `json:"status_detail,omitempty"`
	Message      string      `json:"message"`
	Metadata     Metadata    `json:"metadata"`
	Actor        Actor       `json:"actor"`
	AuthProtocol string      `json:"auth_protocol,omitempty"`
	API          *API        `json:"api,omitempty"`
	SrcEndpoint  Endpoint    `json:"src_endpoint"`
	DstEndpoint  Endpoint    `json:"dst_endpoint"`
	Resources    []Resource  `json:"resources,omitempty"`
	Unmapped     UnmappedDoc `json:"unmapped"`
}

// Metadata is OCSF's metadata object.
type Metadata struct {
	Version string  `json:"version"`
	UID     string  `json:"uid"`
	Product Product `json:"product"`
}

// Product names the software that wrote the record.
type Product struct {
	Name       string `json:"name"`
	VendorName string `json:"vendor_name"`
}

// Actor is who acted, and for an authorization what decided.
type Actor struct {
	User           User       `json:"user"`
	Authorizations []Decision `json:"authorizations,omitempty"`
}

// User is a principal.
type User struct {
	Name string `json:"name"`
}

// Decision is one authorization decision: "allow" or "deny", and the policy (the
// ACL or rule) that made it.
type Decision struct {
	Decision string `json:"decision"`
	Policy   Policy `json:"policy"`
}

// Policy describes a rule.
type Policy struct {
	Name string `json:"name"`
	Desc string `json:"desc,omitempty"`
}

// API is the operation an API Activity record is about.
type API struct {
	Operation string `json:"operation"`
}

// Endpoint is a network endpoint: the client (ip, port), or the broker
// (svc_name: the listener; uid: the node id).
type Endpoint struct {
	IP      string `json:"ip,omitempty"`
	Port    int    `json:"port,omitempty"`
	SvcName string `json:"svc_name,omitempty"`
	UID     string `json:"uid,omitempty"`
}

// UnmappedDoc holds what OCSF has no field for.
type UnmappedDoc struct {
	Floe Floe `json:"floe"`
}

// Floe is Floe's own part of a record. PrevSHA256 is the chain link, set by
// the leader of the record's partition when it appends the record.
type Floe struct {
	Node       int32  `json:"node"`
	Listener   string `json:"listener,omitempty"`
	ClientID   string `json:"client_id,omitempty"`
	Action     string `json:"action"`
	PrevSHA256 string `json:"prev_sha256"`
}

// OCSF class, category and activity codes used.
const (
	classAuthentication = 3002
	classAPIActivity    = 6003
	categoryIAM         = 3
	categoryApplication = 6
	activityLogon       = 1
	activityCreate      = 1
	activityRead        = 2
	activityUpdate      = 3
	activityDelete      = 4
	activityOther       = 99
	severityInfo        = 1
	severityMedium      = 3
	statusSuccess       = 1
	statusFailure       = 2
	ocsfVersion         = "1.0.0"
)

// Record turns an event into its record (without a chain link).
func (e Event) Record() Record {
	r := Record{
		Time: e.TimeMs, SeverityID: severityInfo, StatusID: statusSuccess, Status: "Success", StatusDetail: e.Reason,
		Metadata:    Metadata{Version: ocsfVersion, UID: e.UID, Product: Product{Name: "Floe", VendorName: "Floe"}},
		Actor:       Actor{User: User{Name: e.Principal}},
		SrcEndpoint: endpointOf(e.Client),
		DstEndpoint: Endpoint{SvcName: e.Listener, UID: strconv.Itoa(int(e.Node))},
		Unmapped:    UnmappedDoc{Floe: Floe{Node: e.Node, Listener: e.Listener, ClientID: e.ClientID, Action: e.Action}},
	}
	if !e.Success {
		r.StatusID, r.Status, r.SeverityID = statusFailure, "Failure", severityMedium
	}
	if e.Resource.Type != "" {
		r.Resources = []Resource{e.Resource}
	}
	switch e.Kind {
	case Authentication:
		r.ClassUID, r.ClassName = classAuthentication, "Authentication"
		r.CategoryUID, r.CategoryName = categoryIAM, "Identity & Access Management"
		r.ActivityID, r.ActivityName = activityLogon, "Logon"
		r.AuthProtocol = e.Mechanism
		r.Message = fmt.Sprintf("%s authentication of %s: %s", e.Mechanism, e.Principal, r.Status)
	default:
		r.ClassUID, r.ClassName = classAPIActivity, "API Activity"
		r.CategoryUID, r.CategoryName = categoryApplication, "Application Activity"
		r.ActivityID, r.ActivityName = activityOf(e)
		r.API = &API{Operation: e.API}
		if e.Kind == Authorization {
			d := "allow"
			if !e.Success {
				d = "deny"
			}
			r.Actor.Authorizations = []Decision{{Decision: d, Policy: Policy{Name: "acl", Desc: e.Reason}}}
			r.Message = fmt.Sprintf("%s %s %s on %s %s (%s)", d, e.Principal, e.Action, e.Resource.Type, e.Resource.Name, e.API)
		} else {
			r.Message = fmt.Sprintf("%s %s %s %s: %s", e.Principal, e.Action, e.Resource.Type, e.Resource.Name, r.Status)
		}
	}
	r.TypeUID = r.ClassUID*100 + r.ActivityID
	return r
}

func activityOf(e Event) (int, string) {
	a := strings.ToLower(e.Action)
	switch {
	case strings.HasPrefix(a, "create"):
		return activityCreate, "Create"
	case a == "read" || strings.HasPrefix(a, "describe") || a == "list":
		return activityRead, "Read"
	case strings.HasPrefix(a, "alter") || a == "write" || a == "bind" || a == "unbind" || a == "update":
		return activityUpdate, "Update"
	case strings.HasPrefix(a, "delete"):
		return activityDelete, "Delete"
	}
	return activityOther, "Other"
}

func endpointOf(addr string) Endpoint {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return Endpoint{IP: addr}
	}
	return Endpoint{IP: ap.Addr().Unmap().String(), Port: int(ap.Port())}
}

// Marshal encodes a record.
func (r Record) Marshal() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("audit: record does not encode: %v", err)) // structs of strings and ints: a bug
	}
	return b
}

// Unmarshal decodes a record.
func Unmarshal(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("audit: record does not decode: %w", err)
	}
	return r, nil
}

// Genesis is the prev hash of a partition's first record.
var Genesis [sha256.Size]byte

// Hash is the chain hash of a record's value.
func Hash(value []byte) [sha256.Size]byte { return sha256.Sum256(value) }

// Link returns the record value that follows a record hashing to prev: the
// record with its chain link set. It is what the partition leader appends.
func Link(r Record, prev [sha256.Size]byte) []byte {
	r.Unmapped.Floe.PrevSHA256 = hex.EncodeToString(prev[:])
	return r.Marshal()
}
