/// xoshiro256** seeded by SplitMix64 from 1: the first three outputs, computed with an
/// independent transcription of the reference C code (Blackman and Vigna), so that any
/// change to the generator (and with it to every published hash) fails a test.
enum SimRandomVector {
    static let seed1: [UInt64] = [12_966_619_160_104_079_557, 9_600_361_134_598_540_522, 10_590_380_919_521_690_900]
}
