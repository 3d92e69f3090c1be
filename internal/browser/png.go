package browser

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"sort"
)

// ShrinkPNG writes the screenshot from as a paletted PNG to to: a fraction of the size, for the
// README.
func ShrinkPNG(from, to string) error {
	f, err := os.Open(from)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return err
	}
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(out, quantize(img)); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// quantize maps img onto its 256 most frequent colours (the rest to the nearest of them): a page
// of text and flat charts loses nothing a reader sees.
func quantize(img image.Image) *image.Paletted {
	b := img.Bounds()
	freq := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			freq[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	cs := make([]color.RGBA, 0, len(freq))
	for c := range freq {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool {
		if freq[cs[i]] != freq[cs[j]] {
			return freq[cs[i]] > freq[cs[j]]
		}
		return fmt.Sprint(cs[i]) < fmt.Sprint(cs[j])
	})
	pal := make(color.Palette, 0, 256)
	for _, c := range cs[:min(256, len(cs))] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(b, pal)
	nearest := map[color.RGBA]uint8{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			i, ok := nearest[c]
			if !ok {
				i = uint8(pal.Index(c))
				nearest[c] = i
			}
			out.SetColorIndex(x, y, i)
		}
	}
	return out
}
