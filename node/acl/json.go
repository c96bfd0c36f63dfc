package acl

import "encoding/json"

// Bindings and filters encode their enums as Kafka's numeric codes (kmsg's
// own text form cannot encode UNKNOWN and back), so any value round-trips
// through the controller log; Validate judges it after decoding.

type bindingJSON struct {
	ResourceType int8   `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  int8   `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    int8   `json:"operation"`
	Permission   int8   `json:"permission"`
}

// MarshalJSON implements json.Marshaler.
func (b Binding) MarshalJSON() ([]byte, error) {
	return json.Marshal(bindingJSON{int8(b.ResourceType), b.ResourceName, int8(b.PatternType), b.Principal, b.Host,
		int8(b.Operation), int8(b.Permission)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (b *Binding) UnmarshalJSON(data []byte) error {
	var j bindingJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*b = Binding{ResourceType(j.ResourceType), j.ResourceName, PatternType(j.PatternType), j.Principal, j.Host,
		Operation(j.Operation), Permission(j.Permission)}
	return nil
}

type filterJSON struct {
	ResourceType int8    `json:"resource_type"`
	ResourceName *string `json:"resource_name,omitempty"`
	PatternType  int8    `json:"pattern_type"`
	Principal    *string `json:"principal,omitempty"`
	Host         *string `json:"host,omitempty"`
	Operation    int8    `json:"operation"`
	Permission   int8    `json:"permission"`
}

// MarshalJSON implements json.Marshaler.
func (f Filter) MarshalJSON() ([]byte, error) {
	return json.Marshal(filterJSON{int8(f.ResourceType), f.ResourceName, int8(f.PatternType), f.Principal, f.Host,
		int8(f.Operation), int8(f.Permission)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *Filter) UnmarshalJSON(data []byte) error {
	var j filterJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*f = Filter{ResourceType(j.ResourceType), j.ResourceName, PatternType(j.PatternType), j.Principal, j.Host,
		Operation(j.Operation), Permission(j.Permission)}
	return nil
}
