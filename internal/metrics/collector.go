package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/prometheus/client_golang/prometheus"
)

var labels = []string{"desktop", "name", "owner"}

func desc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, labels...), extra...), nil)
}

var (
	descState      = desc("bureau_desktop_state", "1 for the state each desktop is in.", "state")
	descCPU        = desc("bureau_desktop_cpu_seconds_total", "CPU time used by the desktop's vCPUs.")
	descVCPUs      = desc("bureau_desktop_vcpus", "vCPUs of the desktop.")
	descMemMax     = desc("bureau_desktop_memory_max_bytes", "Memory the desktop was given.")
	descMemBalloon = desc("bureau_desktop_memory_balloon_bytes", "Memory the balloon currently leaves the guest.")
	descMemRSS     = desc("bureau_desktop_memory_rss_bytes", "Host memory held by the desktop's QEMU process.")
	descMemUnused  = desc("bureau_desktop_memory_unused_bytes", "Guest memory the guest reports unused.")
	descMemAvail   = desc("bureau_desktop_memory_available_bytes", "Guest memory the guest reports available.")
	descDiskRead   = desc("bureau_desktop_disk_read_bytes_total", "Bytes read from a disk.", "disk")
	descDiskWrite  = desc("bureau_desktop_disk_written_bytes_total", "Bytes written to a disk.", "disk")
	descDiskAlloc  = desc("bureau_desktop_disk_allocation_bytes", "Host space a disk's file takes.", "disk")
	descDiskCap    = desc("bureau_desktop_disk_capacity_bytes", "A disk's size as the guest sees it.", "disk")
	descNetRx      = desc("bureau_desktop_network_receive_bytes_total", "Bytes received.", "interface")
	descNetTx      = desc("bureau_desktop_network_transmit_bytes_total", "Bytes sent.", "interface")
	descViewers    = desc("bureau_desktop_console_viewers", "Console viewers connected now.")
	descScrapeErr  = prometheus.NewDesc("bureau_scrape_errors_total", "1 when reading desktops or VM statistics failed in this scrape.", []string{"source"}, nil)
)

// collector reads desktops and VM statistics at scrape time.
type collector struct {
	desktops Desktops
	vms      VMs
	viewers  Viewers
	log      *slog.Logger
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descState, descCPU, descVCPUs, descMemMax, descMemBalloon, descMemRSS, descMemUnused,
		descMemAvail, descDiskRead, descDiskWrite, descDiskAlloc, descDiskCap, descNetRx, descNetTx, descViewers, descScrapeErr} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	desktops, err := c.desktops.ListDesktops(ctx, desktop.Filter{})
	if err != nil {
		c.log.Warn("metrics: listing desktops", "err", err)
		ch <- prometheus.MustNewConstMetric(descScrapeErr, prometheus.GaugeValue, 1, "desktops")
		return
	}
	stats, err := c.vms.Stats(ctx)
	if err != nil {
		c.log.Warn("metrics: VM statistics", "err", err)
		ch <- prometheus.MustNewConstMetric(descScrapeErr, prometheus.GaugeValue, 1, "hypervisor")
	}
	var viewers map[string]int
	if c.viewers != nil {
		viewers = c.viewers.Viewers()
	}
	gauge := func(d *prometheus.Desc, v float64, l []string, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(append([]string{}, l...), extra...)...)
	}
	counter := func(d *prometheus.Desc, v float64, l []string, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append(append([]string{}, l...), extra...)...)
	}
	for _, d := range desktops {
		l := []string{d.ID, d.Name, d.Owner}
		gauge(descState, 1, l, string(d.State))
		gauge(descViewers, float64(viewers[d.ID]), l)
		s := stats[d.DomainName()]
		if s == nil {
			continue
		}
		counter(descCPU, float64(s.CPUTimeNs)/1e9, l)
		gauge(descVCPUs, float64(s.VCPUs), l)
		gauge(descMemMax, float64(s.MemoryMaxKiB)*1024, l)
		gauge(descMemBalloon, float64(s.MemoryCurrentKiB)*1024, l)
		gauge(descMemRSS, float64(s.MemoryRSSKiB)*1024, l)
		if s.MemoryUnusedKiB > 0 {
			gauge(descMemUnused, float64(s.MemoryUnusedKiB)*1024, l)
			gauge(descMemAvail, float64(s.MemoryAvailableKiB)*1024, l)
		}
		for _, disk := range s.Disks {
			counter(descDiskRead, float64(disk.ReadBytes), l, disk.Name)
			counter(descDiskWrite, float64(disk.WriteBytes), l, disk.Name)
			gauge(descDiskAlloc, float64(disk.AllocationBytes), l, disk.Name)
			gauge(descDiskCap, float64(disk.CapacityBytes), l, disk.Name)
		}
		for _, n := range s.Networks {
			counter(descNetRx, float64(n.RxBytes), l, n.Name)
			counter(descNetTx, float64(n.TxBytes), l, n.Name)
		}
	}
}
