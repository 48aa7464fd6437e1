// Package configs owns Tally's configuration: the YAML file's types, Load
// (decode with unknown keys refused, defaults, environment overrides,
// relative paths, validation of every field), the API token lookup, and the
// example configuration tally.example.yaml that documents every key.
//
// Core packages never read the environment or flags: the command line loads
// a Config here and hands its typed fields on.
package configs
